"""THE column sets of the original's result CSVs (spec §3.15), for the runner, scoring and naming alike."""

from __future__ import annotations

OPEN = ("problem_id", "final_question", "true_answer", "generated_answer", "full_response")
MCQA = ("problem_id", "final_question", "true_answer", "correct_option", "selected_option", "is_correct",
        "generated_answer", "full_response")
MCQA_NO_FULL = MCQA[:-1]  # Qwen's MCQA file
MCQA_NO_GEN = MCQA[:-2] + ("full_response",)  # Llama-3.2-V's and MedGemma's MCQA files
MEDR1_OPEN = ("problem_id", "original_question", "true_answer", "generated_answer", "full_response")
MEDR1_MCQA = ("problem_id", "original_question", "correct_letter", "correct_answer", "extracted_answer",
              "is_correct", "full_response")

# MedVLM-R1's names for the common fields: CSV column -> field of a derived row
ALIASES = {"original_question": "final_question", "correct_letter": "correct_option",
           "correct_answer": "true_answer", "extracted_answer": "selected_option"}

QUESTION = ("final_question", "original_question")  # the question column, whichever the file has
SCORED = ("problem_id", "true_answer", "generated_answer")  # what exact match needs of an open file
