"""Cells: a partitioned deployment of several croupier applications behind one address."""
