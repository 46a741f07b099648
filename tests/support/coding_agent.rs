//! The demo session both coding-agent test files drive: the task the user
//! types and the exact path of states it takes, whichever model answers.

/// What the user asks for.
pub(crate) const TASK: &str = "Please fix the typo in greeting.sh and check that it works.";

/// Every state the session passes through, in order.
pub(crate) const STATES: [&str; 16] = [
    "WaitingForUserInput",
    // list + read, concurrently
    "CallingLlm",
    "ProcessingLlmResponse",
    "ExecutingTools",
    // edit: mutating, so the hook runs
    "CallingLlm",
    "ProcessingLlmResponse",
    "ExecutingTools",
    "PostToolsHook",
    // run the script to check: a shell command, so the hook runs
    "CallingLlm",
    "ProcessingLlmResponse",
    "ExecutingTools",
    "PostToolsHook",
    // the answer
    "CallingLlm",
    "ProcessingLlmResponse",
    "WaitingForUserInput",
    // the shutdown the session ends with
    "ShuttingDown",
];
