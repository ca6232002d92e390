"""Verification lanes: the evidence each lane has earned, its store in
`refs/vivary/lanes`, its sync, and adaptive verification."""
