import { lua, LUA_SERVER_TIME } from './lua-snippets';
import { RedisScript } from './redis-script';

/** KEYS: [1] lock, [2] readers. Returns 1 while a writer or any live reader holds the name, else 0. */
export const IS_LOCKED_SCRIPT = new RedisScript(
  'is-locked',
  lua(
    LUA_SERVER_TIME,
    `
if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
local _, now = server_time()
if redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf') > 0 then return 1 end
return 0
`,
  ),
);
