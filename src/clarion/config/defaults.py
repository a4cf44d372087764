"""Names and limits the file's models and the settings built from them share. Imports nothing,
so the settings' types load without the models (and without pydantic)."""

BUILTIN_PROFILE = "builtin"
# The shortest answer-link secret or metrics token accepted.
MIN_SECRET = 16
# Seconds an agent's session may sit idle before its process stops (0: never).
DEFAULT_IDLE_STOP_AFTER = 600.0
DEFAULT_SLACK_API_URL = "https://slack.com/api/"
