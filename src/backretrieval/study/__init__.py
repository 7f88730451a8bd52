"""The paper's case study as library code: TRIPLET / TRIPLETXL heads (:mod:`.triplet`) and
the blinded human study (:mod:`.human_study`)."""
