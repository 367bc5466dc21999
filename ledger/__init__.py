"""The only package that writes: signed event log, money, sessions, rounds, projections."""
