/**
 * How big a chaos run is. The CI profile runs inside `npm test` on a loaded two-core machine: few workers,
 * few rounds, generous bounds. The full profile (`CHAOS_PROFILE=full`, what `npm run chaos` uses) runs the
 * sizes the reliability table reports.
 */
export type ChaosProfileName = 'ci' | 'full';

export const CHAOS_PROFILE_ENV = 'CHAOS_PROFILE';

export function chaosProfileName(): ChaosProfileName {
  return process.env[CHAOS_PROFILE_ENV] === 'full' ? 'full' : 'ci';
}

/** Picks the value for the current profile. */
export function sized<T>(profile: ChaosProfileName, ci: T, full: T): T {
  return profile === 'full' ? full : ci;
}
