"""Exports of scored results to the tools people already use (issue #35): a models x items matrix
(``matrix``), inspect_ai logs (``inspect``, the optional extra ``smmile[inspect]``) and Every Eval Ever records
(``eee``). Each reads the results through ``scoring.scores`` and never writes into the results folder."""
