"""Bulk jobs: one resumable JSON Lines job file (see ``jobfile``), run live (``run``) within rate limits."""

from .jobfile import (JobFile, JobRow, OutputWriter, error_row, finished_ids, output_row, read_jobs,
                      read_output)

__all__ = ["JobFile", "JobRow", "OutputWriter", "error_row", "finished_ids", "output_row", "read_jobs",
           "read_output"]
