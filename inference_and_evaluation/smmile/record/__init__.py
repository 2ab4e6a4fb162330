"""The run record: what a result is and the one reader of result, journal and judge files. ``scan(dir)`` finds
the ``RunRecord``s of a folder (``run_record``); the judge's verdicts are written beside the rows it judged
(``verdicts``); the original's files (the published outputs, runs of the original code) are read into the same
type (``original``); a result CSV is read whole or refused (``result_csv``); file names (``naming``)."""
