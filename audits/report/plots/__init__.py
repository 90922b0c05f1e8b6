"""Figures: one function per figure, each returning a matplotlib Figure (never shown)."""
