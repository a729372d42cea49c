import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';

/**
 * Lets a request through only with `x-admin-token: $ADMIN_TOKEN`. With ADMIN_TOKEN unset, nothing gets
 * through: the inspector shows who holds which key, which is not for everyone.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const expected = process.env.ADMIN_TOKEN;
    if (!expected) return false;
    const given = context.switchToHttp().getRequest<{ headers?: Record<string, string | string[] | undefined> }>()
      .headers?.['x-admin-token'];
    if (typeof given !== 'string') return false;
    const a = Buffer.from(given);
    const b = Buffer.from(expected);
    return a.length === b.length && timingSafeEqual(a, b);
  }
}
