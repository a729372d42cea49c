/**
 * One settled promise for every "nothing to wait for" (a release that already happened, no renewal yet): a new
 * promise per grant is a measurable cost once AsyncLocalStorage's promise hooks are on, as they are after the
 * first @WithLock call.
 */
export const SETTLED: Promise<void> = Promise.resolve();
