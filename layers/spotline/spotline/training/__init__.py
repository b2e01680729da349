"""Runs inside training containers, not in Lambda: the checkpoint helper of the checkpoint
contract. Standard library only (Python 3.11+), so it can ship with any training code."""
