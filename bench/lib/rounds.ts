import type { AdapterSpec } from '../peers/adapter';

export interface Entrant<State> {
  readonly spec: AdapterSpec;
  state?: State;
  /** Set when opening or a slice threw; the entrant then sits out the remaining rounds. */
  error?: unknown;
}

export interface RoundPlan<State> {
  readonly rounds: number;
  open(spec: AdapterSpec): Promise<State>;
  /** One timed slice for one library; accumulates into its state. */
  slice(state: State): Promise<void>;
  close(state: State): Promise<void>;
}

/**
 * Runs every library's slice in turn, `rounds` times over, instead of each library in one block: other load
 * on the machine that comes and goes then hits every library alike. The order rotates each round, so no
 * library always runs right after the same other one (or first, while the machine is still settling). Libraries stay open across rounds
 * (each with its own clients) and are all closed at the end, even after a failure.
 */
export async function inRounds<State>(
  specs: readonly AdapterSpec[],
  plan: RoundPlan<State>,
): Promise<Entrant<State>[]> {
  const entrants: Entrant<State>[] = specs.map((spec) => ({ spec }));
  try {
    for (const entrant of entrants) {
      try {
        entrant.state = await plan.open(entrant.spec);
      } catch (error) {
        entrant.error = error;
      }
    }
    for (let round = 0; round < plan.rounds; round++) {
      const start = round % entrants.length;
      for (const entrant of [...entrants.slice(start), ...entrants.slice(0, start)]) {
        if (entrant.error !== undefined || entrant.state === undefined) continue;
        try {
          await plan.slice(entrant.state);
        } catch (error) {
          entrant.error = error;
        }
      }
    }
  } finally {
    await Promise.all(
      entrants.map((entrant) =>
        entrant.state === undefined ? Promise.resolve() : plan.close(entrant.state).catch(() => undefined),
      ),
    );
  }
  return entrants;
}
