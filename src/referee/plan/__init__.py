"""Plans: the YAML file that says what the agent does and how the runner checks it."""

from referee.plan.loader import load_plan, load_plan_text  # noqa: F401
from referee.plan.model import Plan, Step  # noqa: F401
