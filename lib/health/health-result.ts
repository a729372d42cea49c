/**
 * terminus' `HealthIndicatorResult<Key, 'up' | 'down', Details>`, spelled out so that our type declarations need no
 * @nestjs/terminus in an app without health checks. terminus accepts it as its own.
 */
export type HealthResult<Key extends string, Details> = Record<Key, { status: 'up' | 'down' } & Details>;
