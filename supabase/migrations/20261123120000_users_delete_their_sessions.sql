-- "Delete everything about me" and the Sessions page's per-session delete run as the user:
-- a user may delete their own session reports (rows that reference a session, such as
-- conversation turns, go with it through their foreign key's ON DELETE CASCADE).
grant delete on public.sessions to authenticated;

create policy "Users can delete their own sessions"
  on public.sessions for delete to authenticated
  using ((select auth.uid()) = user_id);
