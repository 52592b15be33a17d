-- CallLock store: the calls list stays fast at any size (issue 22).
--
-- The list (`search_calls`: the dashboard's `/` and `/api/calls`) is newest
-- first, filtered by any mix of status, final state, priority, caller
-- digits, a time window and a cursor. The rows themselves are wide (the
-- record and the transcript, a few KB each), so a filter that the database
-- checks on the rows costs a read of every row it passes over. Instead,
-- every list index below carries every narrow column a filter looks at:
-- whichever index the planner walks (the one whose leading column is
-- filtered by equality, or the time order when none is), it decides each
-- row from the index alone and reads only the rows of the page.
CREATE INDEX calls_list ON calls (started_unix DESC, call_id, status, final_state, priority_color, phone);
CREATE INDEX calls_list_status ON calls (status, started_unix DESC, call_id, final_state, priority_color, phone);
CREATE INDEX calls_list_state ON calls (final_state, started_unix DESC, call_id, status, priority_color, phone);
CREATE INDEX calls_list_priority ON calls (priority_color, started_unix DESC, call_id, status, final_state, phone);
CREATE INDEX calls_list_phone ON calls (phone, started_unix DESC, call_id, status, final_state, priority_color);
-- Superseded by calls_list and calls_list_phone (their leading columns).
DROP INDEX calls_started;
DROP INDEX calls_phone;

-- "Calls from numbers containing these digits" cannot use a b-tree on the
-- number (the digits may be anywhere in it), and checking every call is a
-- scan. Every suffix of every caller's digits is kept here instead: the
-- numbers containing "5550042" are those with a suffix starting with it,
-- one range of this table's key. One row per (suffix, number), written
-- when a call's record is saved; a number never leaves (a number no call
-- has any more only costs a lookup that finds nothing).
CREATE TABLE call_phone_suffixes (
    -- the digits of `phone` from some position to its end
    suffix TEXT NOT NULL,
    -- calls.phone as stored
    phone  TEXT NOT NULL,
    PRIMARY KEY (suffix, phone)
);
-- The numbers already called from, each suffix of their digits (the
-- number without + - ( ) . and spaces; `phone_suffixes` in
-- src/call_search.rs does the same for numbers saved later).
WITH RECURSIVE s (suffix, phone) AS (
    SELECT DISTINCT
        REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(phone, '+', ''), '-', ''), ' ', ''), '(', ''), ')', ''), '.', ''),
        phone
    FROM calls
    UNION
    SELECT substr(suffix, 2), phone FROM s WHERE length(suffix) > 1
)
INSERT INTO call_phone_suffixes (suffix, phone)
SELECT suffix, phone FROM s WHERE suffix <> '';
