"""Jacks or Better video poker (seed 000, 4 lines; seed 004, multi-hand): paytables,
recommended holds and the exact maths of the game."""
