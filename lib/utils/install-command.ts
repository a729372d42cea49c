import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Each package manager's lock file and the command that adds a dependency with it. */
const MANAGERS = [
  { name: 'pnpm', lockFile: 'pnpm-lock.yaml', add: 'pnpm add' },
  { name: 'yarn', lockFile: 'yarn.lock', add: 'yarn add' },
  { name: 'bun', lockFile: 'bun.lock', add: 'bun add' },
  { name: 'bun', lockFile: 'bun.lockb', add: 'bun add' },
  { name: 'npm', lockFile: 'package-lock.json', add: 'npm install' },
] as const;

/**
 * The command that adds `packageName` to the app, with the package manager it uses: the one running the app's
 * script (npm_config_user_agent), Yarn when Plug'n'Play loads the app, else the one whose lock file is nearest
 * above the working directory. npm when nothing tells. Only called to word an error.
 */
export function installCommand(packageName: string, env = process.env, cwd = process.cwd()): string {
  return `${managerOf(env, cwd).add} ${packageName}`;
}

function managerOf(env: NodeJS.ProcessEnv, cwd: string): (typeof MANAGERS)[number] {
  const agent = env.npm_config_user_agent?.split('/')[0];
  const running = MANAGERS.find((manager) => manager.name === agent);
  if (running) return running;
  if ((process.versions as { pnp?: string }).pnp) return MANAGERS[1];
  for (let dir = cwd, depth = 0; depth < 20; depth++) {
    const found = MANAGERS.find((manager) => existsSync(join(dir, manager.lockFile)));
    if (found) return found;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return MANAGERS[MANAGERS.length - 1];
}
