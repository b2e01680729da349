"""The team registry and the queue's quota shares on AWS: reads, ApplyTeamChange's writes, resource tags."""
