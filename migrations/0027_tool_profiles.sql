-- Which tools a token's client is shown and may call (tools/tool_profiles.py): 'core', the few
-- tools of a task's usual path, for clients whose context window pays for every tool listed on
-- every turn; or 'full', every tool. Existing tokens keep every tool.
ALTER TABLE api_tokens
    ADD COLUMN tool_profile text NOT NULL DEFAULT 'full'
        CONSTRAINT api_tokens_tool_profile_check CHECK (tool_profile IN ('core', 'full'));
