"""Beyond the paper: when does Backretrieval work, and how far can it be trusted?

One analysis in one place: each is a class in its own module (:mod:`.analysis` describes the
contract; the registry, the settings' defaults, the config's ``findings:`` keys, the command
``backretrieval findings --analysis NAME``, the workflow's rules and the questions of
docs/FINDINGS.md are derived from the classes). An analysis reads one run's cached artifacts
(:mod:`.artifacts`) and returns a :class:`~.result.Result`; the one step
(:func:`backretrieval.steps.findings.analysis_step`) writes
``<reports_dir>/findings/<analysis>.{csv,md,json}`` (+ figures), and :mod:`.document` assembles
docs/FINDINGS.md from every configuration's records.

* :mod:`.inference` (1): the unit of inference — item bootstrap, pairwise-order accuracy,
  sensitivity, one verdict across datasets × directions (a package: the method is the library's,
  :mod:`backretrieval.stats.crossed` and its neighbours; :mod:`.inference.per_run` the analysis on
  one run, :mod:`.inference.verdict` the verdict across configurations; :mod:`.inference_sim`
  its simulated worlds).
* :mod:`.image_quality` (2: image features vs BkR's agreement with XLR), :mod:`.sample_size`
  (3: ranking stability vs N), :mod:`.hubness` (4: k-occurrence, CSLS / margin, injected hubs),
  with :mod:`.views` (one seed's sample of one direction as arrays) shared by them.
* :mod:`.calibration` (5): BkR → XLR (image-side mixture, regression), soft BkR.
* :mod:`.bli` + :mod:`.agreement` (6): bilingual lexicon induction for the word-vector
  family; the agreement matrix of every metric across encoders.
* :mod:`.document`: the JSON record every analysis writes (:class:`~.document.FindingsRecord`)
  and the generator of docs/FINDINGS.md and of the README's verdict sentence.
"""
