// Moved to lib/errors. Kept only for lib/decorators and lib/interceptors, which import this path until they are
// rewritten; delete this file once nothing imports it.
export { UnresolvedPlaceholderError } from '../errors/unresolved-placeholder.error';
