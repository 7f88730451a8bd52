"""Leaf helpers shared by every layer: atomic artifact writes (:mod:`.io`)."""
