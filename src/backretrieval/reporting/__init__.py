"""Tables and figures of the paper, regenerated from metric artifacts (never edited by hand).

:mod:`.tables` (Table 1 / Table 2 in Markdown and LaTeX, bootstrap CIs over seeds, the DVC
metrics file), :mod:`.figures` (reproducible PNG/SVG/PDF: Figure 2, Figure 3, loss curves),
:mod:`.significance` (BkR vs CORR tests behind the Table 1 marks), :mod:`.versions`
(software versions for the record)."""
