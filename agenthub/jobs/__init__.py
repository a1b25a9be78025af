"""Bulk jobs: one resumable JSON Lines job file (see ``jobfile``), run live (``run``) within rate limits."""

from .jobfile import (JobFile, JobRow, OutputWriter, error_row, finished_ids, iter_rows, output_row, read_jobs,
                      read_output)
from .runner import JobSummary, run
from .batch import BatchJob, BatchStatus, FetchSummary, load, submit  # the providers' batch engines

__all__ = ["JobFile", "JobRow", "OutputWriter", "error_row", "finished_ids", "iter_rows", "output_row",
           "read_jobs", "read_output", "run", "JobSummary", "submit", "load", "BatchJob", "BatchStatus", "FetchSummary"]
