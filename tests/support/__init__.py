"""Helpers the tests share and the benchmarks may use: stand-ins for services that cannot run here
(an OpenAI-compatible server, Supabase Auth), a fake browser for voice calls, signed-in users, the
app under AppTest or `streamlit run`, and browser page helpers. Nothing in agent/, core/, ui/ or
pages/ imports from here."""
