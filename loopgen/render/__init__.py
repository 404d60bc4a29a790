"""Stage 4: the renderer: Plan -> the script's text (script.py), its imports from the names it uses (names.py),
values as source (values.py), black (formatting.py); header.py reads a rendered script's header back."""
