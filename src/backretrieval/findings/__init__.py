"""Beyond the paper: when does Backretrieval work, and how far can it be trusted?

One module per question of the findings (docs/FINDINGS.md is generated from their outputs):
:mod:`.image_quality` (how good must the image side be), :mod:`.sample_size` (how large must
N be), :mod:`.hubness` (k-occurrence, CSLS / margin retrieval, injected hubs), with
:mod:`.views` (one seed's sample of one direction as arrays) shared by them. Library code:
explicit arguments, no config, no artifact paths (those are in ``steps.findings``).
"""
