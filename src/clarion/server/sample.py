"""The first-start sample: one task whose session asks a question, so the web UI shows the
main job (answering an agent) the moment a new user opens it.

Offered by `serving.run_server` after startup recovery, only when the database holds no task at
all. Clarion never deletes tasks, so a database that ever held one (the sample included, done
or not) never gets another sample. `CLARION_NO_SAMPLE=1` turns it off.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from clarion.api.services import ApiServices
from clarion.config import BUILTIN_PROFILE

log = logging.getLogger(__name__)

SAMPLE_TITLE = "Try Clarion: answer the agent's question"
SAMPLE_DESCRIPTION = (
    "/scenario ask\n"
    "\n"
    "A sample task created on Clarion's first start. Its session runs the built-in agent, "
    "which asks which database to use. Answer it here, or with `clarion questions` and "
    "`clarion answer PENDING_ID`, and the agent carries on with your answer."
)
_TRUE = frozenset({"1", "true", "yes", "on"})


async def offer_sample_task(
    services: ApiServices, env: Mapping[str, str] | None = None
) -> str | None:
    """Create the sample task and start its session; returns the task id, or None when the
    sample is off or the database already holds tasks. Never raises: a failed sample must
    not take the server down."""
    env = os.environ if env is None else env
    if env.get("CLARION_NO_SAMPLE", "").strip().lower() in _TRUE:
        return None
    try:
        if await services.reads.tasks():
            return None
        task = await services.tasks.create(
            title=SAMPLE_TITLE,
            description=SAMPLE_DESCRIPTION,
            workspace=None,
            workspace_default=False,  # the sample makes no branch in a person's repository
        )
        session = await services.sessions.start(
            task.id, agent=BUILTIN_PROFILE, prompt=None, is_primary=True
        )
    except Exception:
        log.exception("could not create the sample task")
        return None
    log.info("sample task created", extra={"task_id": task.id, "session_id": session.id})
    return task.id
