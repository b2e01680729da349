"""`spotline local`: the local stack served over HTTP as an AWS endpoint."""
