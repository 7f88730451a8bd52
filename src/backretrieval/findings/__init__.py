"""Beyond the paper: when does Backretrieval work, and how far can it be trusted?

One module per question; each analysis is a library function over cached artifacts of the
main pipeline (explicit arguments, no config, no artifact layout). The step functions in
:mod:`backretrieval.steps.findings` call them and write
``<reports_dir>/findings/<analysis>.{csv,md,json}`` (+ figures), and :mod:`.document`
assembles ``docs/FINDINGS.md`` from every configuration's ``<analysis>.json``.

* :mod:`.inference` (1): the unit of inference — crossed encoder × item bootstrap,
  pairwise-order accuracy, sensitivity, one verdict across datasets × directions.
* :mod:`.image_quality` (2: image features vs BkR's agreement with XLR), :mod:`.sample_size`
  (3: ranking stability vs N), :mod:`.hubness` (4: k-occurrence, CSLS / margin, injected hubs),
  with :mod:`.views` (one seed's sample of one direction as arrays) shared by them.
* :mod:`.calibration` (5): BkR → XLR (image-side mixture, regression), soft BkR.
* :mod:`.bli` + :mod:`.agreement` (6): bilingual lexicon induction for the word-vector
  family; the agreement matrix of every metric across encoders.
* :mod:`.document`: the JSON record every analysis writes (:class:`~.document.FindingsRecord`)
  and the generator of docs/FINDINGS.md and of the README's verdict sentence.
"""
