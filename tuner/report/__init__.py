"""The face of tuner.report: what other packages use of it; the rest is private.

Its names are imported at their first use (:mod:`tuner.core.lazy_face`): the study report
brings the study package, Optuna and SQLAlchemy, and the measurement tables the load
generator, which a command that needs one table (``tune bench``, ``tune workload fit``) does
without."""

from typing import TYPE_CHECKING

from tuner.core import lazy_face

if TYPE_CHECKING:
    from tuner.report.bench_tables import (
        capacity_table,
        count,
        prefix_cache_warning,
        share,
        summary_table,
    )
    from tuner.report.comparison import (
        Comparison,
        comparison_verdict,
        engine_deltas,
        engine_result,
        operations,
    )
    from tuner.report.document import html_page, markdown, notes, table
    from tuner.report.measure_report import measure_table, spread_lines
    from tuner.report.plots import all_plots
    from tuner.report.study_report import (
        baseline_text,
        best_config_yaml,
        final_table,
        study_verdict,
        write_plots,
    )
    from tuner.report.tradeoff_report import front_table, tradeoff_plot
    from tuner.report.trials_csv import write_trials_csv
    from tuner.report.workload_fit_plot import plot_fit

__all__ = [
    "Comparison", "all_plots", "baseline_text", "best_config_yaml", "capacity_table",
    "comparison_verdict",
    "count", "engine_deltas", "engine_result", "final_table", "front_table", "html_page",
    "markdown", "measure_table", "notes", "operations", "plot_fit", "prefix_cache_warning", "share",
    "spread_lines", "study_verdict", "summary_table", "table", "tradeoff_plot", "write_plots",
    "write_trials_csv",
]
__getattr__ = lazy_face(__name__, __file__)
