-- Why a request was withdrawn, when it was: its agent went on without askrelay's answer
-- (`answered_in_terminal`, `agent_moved_on`, `hook_killed`; docs/approvals.md, "Withdrawn when
-- answered elsewhere"). NULL for every other request. The request itself ends `cancelled`.
ALTER TABLE requests ADD COLUMN withdrawn TEXT;
