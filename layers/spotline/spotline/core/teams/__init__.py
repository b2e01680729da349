"""What each team may run (pure): the team policy, the team registry, ownership, approvals, quota shares."""
