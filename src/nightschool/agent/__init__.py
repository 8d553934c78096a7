"""The chat agent: sandboxed tools, the agent turn, the verifier and `ChatPipeline`.

`ChatPipeline.handle(messages, session_id=...)` answers one chat turn with a
tool-using agent in a per-session sandboxed workspace (native tool calls
when the model supports them, a fenced JSON protocol otherwise), shows it
playbook lessons and worked examples (skills), rewrites a reply whose code
uses the agent's own tool names (`find_tool_leaks`), runs the examples a request
states (`request_examples`) and redraws once on a failure, checks the turn (outcome
heuristics, verifier), records a redacted trajectory, and learns in real time when the user
corrects the previous answer. `verify_chat_lesson` re-solves a chat lesson's own request
with and without it, judged by the request's examples (`chat_lesson_candidates`).
Importing this package loads no model and starts no thread.
"""

from nightschool.agent._examples import request_examples
from nightschool.agent._leak import (
    LEAK_NOTE,
    LeakSite,
    find_tool_leaks,
    leak_sites,
    mentioned_names,
)
from nightschool.agent._request import CORRECTION_CACHE_SIZE, reply_fingerprint, session_dir_name
from nightschool.agent._types import AgentConfig, BackgroundResult, CorrectionEvent, TurnResult
from nightschool.agent._verify_chat import (
    CHAT_VERIFY_K,
    ChatVerification,
    chat_lesson_candidates,
    verify_chat_lesson,
)
from nightschool.agent.loop import (
    NATIVE_SYSTEM_PROMPT,
    PROGRAMS_NOTE,
    SYSTEM_PROMPT,
    ParsedToolCall,
    ToolBlob,
    ToolProtocol,
    TurnRun,
    blob_correction,
    build_system_prompt,
    conversation_window,
    detect_blob,
    parse_tool_call,
    run_steps,
    uses_native_tools,
)
from nightschool.agent.pipeline import ChatPipeline
from nightschool.agent.tools import (
    TOOL_SCHEMAS,
    TOOL_SPECS,
    PathRefusedError,
    SessionWorkspace,
    ToolOutcome,
)
from nightschool.agent.verifier import (
    REFUTE_CONFIDENCE,
    VERIFIER_GRAMMAR,
    VERIFIER_RUBRIC,
    Verifier,
    VerifierVerdict,
    build_verifier_prompt,
    parse_verdict,
)

__all__ = [
    "CHAT_VERIFY_K",
    "CORRECTION_CACHE_SIZE",
    "LEAK_NOTE",
    "NATIVE_SYSTEM_PROMPT",
    "PROGRAMS_NOTE",
    "REFUTE_CONFIDENCE",
    "SYSTEM_PROMPT",
    "TOOL_SCHEMAS",
    "TOOL_SPECS",
    "VERIFIER_GRAMMAR",
    "VERIFIER_RUBRIC",
    "AgentConfig",
    "BackgroundResult",
    "ChatPipeline",
    "ChatVerification",
    "CorrectionEvent",
    "LeakSite",
    "ParsedToolCall",
    "PathRefusedError",
    "SessionWorkspace",
    "ToolBlob",
    "ToolOutcome",
    "ToolProtocol",
    "TurnResult",
    "TurnRun",
    "Verifier",
    "VerifierVerdict",
    "blob_correction",
    "build_system_prompt",
    "build_verifier_prompt",
    "chat_lesson_candidates",
    "conversation_window",
    "detect_blob",
    "find_tool_leaks",
    "leak_sites",
    "mentioned_names",
    "parse_tool_call",
    "parse_verdict",
    "reply_fingerprint",
    "request_examples",
    "run_steps",
    "session_dir_name",
    "uses_native_tools",
    "verify_chat_lesson",
]
