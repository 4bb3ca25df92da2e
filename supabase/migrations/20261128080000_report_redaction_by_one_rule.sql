-- A deleted memory's text leaves past turns and session reports by one rule, checked in one place.
--
-- Since 20261128050000, deleting memories finds the report strings that say a deleted text in Python
-- (core.conversations.Mentions, the rule the past turns are deleted by too) and blanks exactly those
-- strings (public.blank_strings_in_session_reports). A report saved after the deletion is now cleaned the
-- same way before it is written (core.sessions), so the pattern-per-text functions of 20261128010000 have
-- no caller left. A visitor could still call public.forget_in_session_reports on their own reports; it goes.

drop function if exists public.forget_in_session_reports(text[], text[]);
drop function if exists memory_playground_private.redact_mentions(jsonb, text[], text);
