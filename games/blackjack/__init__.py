"""Infinite Blackjack (seed 002): the pure shared-table engine's public API."""
