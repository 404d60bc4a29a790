"""Stage 2: what the user's source says, read with `ast` (never imported): classes, optimizers, signatures."""
