"""The one list every recording stand-in appends to, so that their order can be checked."""

CALLS: list = []
