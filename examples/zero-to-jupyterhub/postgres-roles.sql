-- jupyter-agent on one shared PostgreSQL database: a login role per user and row-level
-- security on every table holding a user's data, so the credentials in a user's pod read
-- and write that user's rows only (docs/jupyterhub.md, "A database role per user").
--
-- Run as the role that owns the agent's tables (the one whose URL created the schema; it
-- needs CREATEROLE for the roles below), in the agent's database, once the schema exists
-- and again after every upgrade of jupyter-agent (a new version may add tables):
--   psql "$OWNER_URL" -v ON_ERROR_STOP=1 -f postgres-roles.sql
-- The owner role bypasses these policies (it runs the migrations); never give its URL
-- to a pod. Then a login role per user, named exactly as the Hub names the user:
--   CREATE ROLE "alice" LOGIN PASSWORD '...' IN ROLE agent_users;

DO $$
BEGIN
    CREATE ROLE agent_users NOLOGIN;
EXCEPTION WHEN duplicate_object THEN
    NULL;
END
$$;

GRANT USAGE ON SCHEMA public TO agent_users;
-- Shared: the schema's version, and the deployed programs every run may use (grant
-- INSERT on the two program tables to the roles of the admins who deploy programs).
GRANT SELECT ON schema_version, agent_programs, agent_program_activations TO agent_users;
-- Each user's own rows, through the policies below.
GRANT SELECT, INSERT, UPDATE, DELETE ON
    chats, agent_turns, agent_runs, agent_mail, agent_chunks, agent_memories,
    agent_memory_vectors, agent_recall_docs, agent_recall_df, agent_recall_suppressed,
    agent_recall_pending, agent_proposals, agent_settings
    TO agent_users;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO agent_users;

-- Tables with an owner column: the row's owner is the database user.
ALTER TABLE chats ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON chats;
CREATE POLICY agent_owner ON chats
    USING (owner = current_user) WITH CHECK (owner = current_user);

ALTER TABLE agent_runs ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_runs;
CREATE POLICY agent_owner ON agent_runs
    USING (owner = current_user) WITH CHECK (owner = current_user);

ALTER TABLE agent_memories ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_memories;
CREATE POLICY agent_owner ON agent_memories
    USING (owner = current_user) WITH CHECK (owner = current_user);

ALTER TABLE agent_recall_docs ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_recall_docs;
CREATE POLICY agent_owner ON agent_recall_docs
    USING (owner = current_user) WITH CHECK (owner = current_user);

ALTER TABLE agent_recall_df ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_recall_df;
CREATE POLICY agent_owner ON agent_recall_df
    USING (owner = current_user) WITH CHECK (owner = current_user);

ALTER TABLE agent_proposals ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_proposals;
CREATE POLICY agent_owner ON agent_proposals
    USING (owner = current_user) WITH CHECK (owner = current_user);

ALTER TABLE agent_settings ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_settings;
CREATE POLICY agent_owner ON agent_settings
    USING (owner = current_user) WITH CHECK (owner = current_user);

-- Tables without one: through their chat, run or memory (whose own policy applies too).
ALTER TABLE agent_turns ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_turns;
CREATE POLICY agent_owner ON agent_turns
    USING (EXISTS (SELECT 1 FROM chats c WHERE c.id = chat_id AND c.owner = current_user))
    WITH CHECK (EXISTS (SELECT 1 FROM chats c WHERE c.id = chat_id AND c.owner = current_user));

ALTER TABLE agent_mail ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_mail;
CREATE POLICY agent_owner ON agent_mail
    USING (EXISTS (SELECT 1 FROM chats c WHERE c.id = chat_id AND c.owner = current_user))
    WITH CHECK (EXISTS (SELECT 1 FROM chats c WHERE c.id = chat_id AND c.owner = current_user));

ALTER TABLE agent_chunks ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_chunks;
CREATE POLICY agent_owner ON agent_chunks
    USING (EXISTS (SELECT 1 FROM chats c WHERE c.id = chat_id AND c.owner = current_user))
    WITH CHECK (EXISTS (SELECT 1 FROM chats c WHERE c.id = chat_id AND c.owner = current_user));

ALTER TABLE agent_recall_suppressed ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_recall_suppressed;
CREATE POLICY agent_owner ON agent_recall_suppressed
    USING (EXISTS (SELECT 1 FROM agent_runs r WHERE r.run_id = agent_recall_suppressed.run_id
                   AND r.owner = current_user))
    WITH CHECK (EXISTS (SELECT 1 FROM agent_runs r
                        WHERE r.run_id = agent_recall_suppressed.run_id
                        AND r.owner = current_user));

ALTER TABLE agent_recall_pending ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_recall_pending;
CREATE POLICY agent_owner ON agent_recall_pending
    USING (EXISTS (SELECT 1 FROM agent_turns t JOIN chats c ON c.id = t.chat_id
                   WHERE t.id = agent_recall_pending.turn_id AND c.owner = current_user))
    WITH CHECK (EXISTS (SELECT 1 FROM agent_turns t JOIN chats c ON c.id = t.chat_id
                        WHERE t.id = agent_recall_pending.turn_id
                        AND c.owner = current_user));

ALTER TABLE agent_memory_vectors ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS agent_owner ON agent_memory_vectors;
CREATE POLICY agent_owner ON agent_memory_vectors
    USING (EXISTS (SELECT 1 FROM agent_memories m WHERE m.id = memory_id
                   AND m.owner = current_user))
    WITH CHECK (EXISTS (SELECT 1 FROM agent_memories m WHERE m.id = memory_id
                        AND m.owner = current_user));
