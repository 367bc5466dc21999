"""Pure game rules: cards, random streams, evaluators, engines and maths (no I/O)."""
