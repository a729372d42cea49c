/* eslint-disable @typescript-eslint/unbound-method -- methods are read here as values (metadata, parameter names), never called unbound */
import { compileArgumentLookup } from '../../lib/key-template/argument-lookup';
import { contextLookup, httpLookup, payloadLookup } from '../../lib/key-template/context-lookup';
import { encodeKeyPart } from '../../lib/key-template/encode-key-part';
import { InvalidKeyTemplateError } from '../../lib/errors';
import { readParameterNames } from '../../lib/key-template/parameter-names';
import { parseKeyTemplate } from '../../lib/key-template/parse-key-template';
import { renderKeyTemplate } from '../../lib/key-template/render-key-template';
import { UnresolvedPlaceholderError } from '../../lib/errors';
import { TypedContext } from './support/typed-context';

const render = (template: string, request: unknown) =>
  renderKeyTemplate(parseKeyTemplate(template), httpLookup(request));

describe('parseKeyTemplate', () => {
  it('splits literals and placeholders', () => {
    const template = parseKeyTemplate('file:<<id>>:v<<query.v>>');
    expect(template.parts).toEqual([
      { literal: 'file:' },
      { placeholder: { text: '<<id>>', path: ['id'] } },
      { literal: ':v' },
      { placeholder: { text: '<<query.v>>', path: ['query', 'v'] } },
    ]);
    expect(template.placeholders.map((placeholder) => placeholder.text)).toEqual(['<<id>>', '<<query.v>>']);
  });

  it('accepts a template without placeholders and a lone ">>"', () => {
    expect(parseKeyTemplate('reports:nightly').parts).toEqual([{ literal: 'reports:nightly' }]);
    expect(parseKeyTemplate('a>>b').parts).toEqual([{ literal: 'a>>b' }]);
  });

  it.each([
    ['file:<<id', /"<<" at position 5 is never closed/],
    ['file:<<>>', /empty placeholder/],
    ['file:<<a b>>', /is not a name/],
    ['file:<<a..b>>', /is not a name/],
    ['file:<<.a>>', /is not a name/],
    ['file:<<a<<b>>', /is not a name/],
    ['', /non-empty string/],
  ])('rejects %j with a clear message', (source, message) => {
    expect(() => parseKeyTemplate(source)).toThrow(InvalidKeyTemplateError);
    expect(() => parseKeyTemplate(source)).toThrow(message);
  });

  it('rejects a non-string template', () => {
    expect(() => parseKeyTemplate(42)).toThrow(InvalidKeyTemplateError);
  });
});

describe('encodeKeyPart', () => {
  it('keeps plain identifiers readable', () => {
    expect(encodeKeyPart('report-2024_01.v2~x')).toBe('report-2024_01.v2~x');
    expect(encodeKeyPart(42)).toBe('42');
    expect(encodeKeyPart(-1.5)).toBe('-1.5');
    expect(encodeKeyPart(10n)).toBe('10');
    expect(encodeKeyPart(true)).toBe('true');
  });

  it('encodes every character that could change the key structure or act as a wildcard', () => {
    const encoded = encodeKeyPart(':/<>%*?[]{}!\'() #&=+,;@$\\"|^`')!;
    expect(encoded).toMatch(/^[A-Za-z0-9_.~%-]+$/);
    expect(decodeURIComponent(encoded)).toBe(':/<>%*?[]{}!\'() #&=+,;@$\\"|^`');
    expect(encodeKeyPart('7:*')).toBe('7%3A%2A');
    expect(encodeKeyPart('%3A')).toBe('%253A');
  });

  it('normalises to NFC so both spellings of a name lock the same key', () => {
    expect(encodeKeyPart('e\u0301')).toBe(encodeKeyPart('\u00e9'));
  });

  it.each([[undefined], [null], [''], [{}], [[1]], [NaN], [Infinity], [() => 1], [Symbol('s')], ['\ud800']])(
    'refuses %p',
    (value) => {
      expect(encodeKeyPart(value)).toBeUndefined();
    },
  );
});

describe('HTTP placeholders', () => {
  const request = {
    params: { id: '7' },
    query: { id: 'from-query', v: '3', list: ['a', 'b'] },
    body: { id: 'from-body', order: { id: 99 }, only: 'body' },
    headers: { 'x-tenant': 'acme' },
    user: { id: 'u1' },
  };

  it('resolves a bare name from params, then query, then body', () => {
    expect(render('file:<<id>>', request)).toBe('file:7');
    expect(render('file:<<v>>', request)).toBe('file:3');
    expect(render('file:<<only>>', request)).toBe('file:body');
    expect(render('file:<<order.id>>', request)).toBe('file:99');
  });

  it('resolves explicit sources', () => {
    expect(render('<<params.id>>|<<query.id>>|<<body.id>>|<<body.order.id>>', request)).toBe(
      '7|from-query|from-body|99',
    );
    expect(render('t:<<headers.x-tenant>>:<<user.id>>', request)).toBe('t:acme:u1');
    expect(render('t:<<headers.X-Tenant>>', request)).toBe('t:acme');
  });

  it('encodes user input, so it cannot address another key', () => {
    expect(render('file:<<id>>', { params: { id: '7:*' } })).toBe('file:7%3A%2A');
  });

  it.each([
    ['file:<<missing>>', '<<missing>> is missing'],
    ['file:<<body.order>>', '<<body.order>> is an object'],
    ['file:<<query.list>>', '<<query.list>> is an array'],
    ['file:<<body.nothing.deep>>', '<<body.nothing.deep>> is missing'],
  ])('rejects %s, naming the placeholder', (template, message) => {
    expect(() => render(template, request)).toThrow(UnresolvedPlaceholderError);
    expect(() => render(template, request)).toThrow(message);
  });

  it('rejects null and empty values, never rendering "undefined"', () => {
    expect(() => render('file:<<id>>', { params: { id: null } })).toThrow('<<id>> is null');
    expect(() => render('file:<<id>>', { params: { id: '' } })).toThrow('<<id>> is an empty string');
    expect(() => render('file:<<id>>', {})).toThrow('<<id>> is missing');
  });

  it('does not reach into the prototype chain', () => {
    expect(() => render('x:<<body.constructor.name>>', { body: {} })).toThrow('is missing');
    expect(() => render('x:<<__proto__>>', { body: {} })).toThrow('is missing');
  });

  it("reads getters of the object's own classes (an entity's `get id()`, a Mongoose document's fields), nothing else there", () => {
    class Account {
      constructor(private readonly accountId: string) {}
      get id(): string {
        return this.accountId;
      }
      describe(): string {
        return 'account';
      }
    }
    class AuthUser extends Account {
      get tenant(): { name: string } {
        return { name: 'acme' };
      }
    }
    const user = new AuthUser('7');
    expect(render('u:<<user.id>>:<<user.tenant.name>>', { user })).toBe('u:7:acme');
    expect(() => render('u:<<user.describe>>', { user })).toThrow('<<user.describe>> is missing');
    expect(() => render('u:<<user.constructor.name>>', { user })).toThrow('is missing');
    expect(() => render('u:<<user.__proto__>>', { user })).toThrow('is missing');
  });
});

describe('RPC, WebSocket and GraphQL placeholders', () => {
  it('resolve from the message payload', () => {
    expect(
      renderKeyTemplate(
        parseKeyTemplate('job:<<id>>:<<meta.tenant>>'),
        payloadLookup({ id: 5, meta: { tenant: 'a' } }),
      ),
    ).toBe('job:5:a');
    const rpc = new TypedContext('rpc', [{ id: 'r1' }, {}]);
    expect(renderKeyTemplate(parseKeyTemplate('job:<<id>>'), contextLookup(rpc))).toBe('job:r1');
    const ws = new TypedContext('ws', [{ client: true }, { id: 'w1' }]);
    expect(renderKeyTemplate(parseKeyTemplate('room:<<id>>'), contextLookup(ws))).toBe('room:w1');
    const graphql = new TypedContext('graphql', [{ root: true }, { input: { id: 'g1' } }, {}, {}]);
    expect(renderKeyTemplate(parseKeyTemplate('order:<<input.id>>'), contextLookup(graphql))).toBe('order:g1');
  });

  it('refuses other context types with a pointer to the function form', () => {
    const custom = new TypedContext('custom-transport', []);
    expect(() => contextLookup(custom)).toThrow(/not in "custom-transport" ones\. Pass a function instead/);
  });
});

describe('method argument placeholders', () => {
  class Reports {
    generate(reportId: string, order: { id: number }) {
      return [reportId, order];
    }
    withDefault(a: string, b = 2) {
      return [a, b];
    }
    async *stream(first: string) {
      yield first;
    }
  }
  const keys = (template: string, method: Function, args: unknown[]) => {
    const parsed = parseKeyTemplate(template);
    return renderKeyTemplate(parsed, compileArgumentLookup([parsed], method, 'Reports.x')(args));
  };

  it('resolves indexes and paths into arguments', () => {
    expect(keys('report:<<0>>:<<1.id>>', Reports.prototype.generate, ['r1', { id: 4 }])).toBe('report:r1:4');
  });

  it('resolves parameter names when the parameter list is simple', () => {
    expect(keys('report:<<reportId>>:<<order.id>>', Reports.prototype.generate, ['r1', { id: 4 }])).toBe('report:r1:4');
  });

  it("reads getters of an argument's class", () => {
    class Order {
      constructor(private readonly orderId: number) {}
      get id(): number {
        return this.orderId;
      }
    }
    expect(keys('report:<<reportId>>:<<order.id>>', Reports.prototype.generate, ['r1', new Order(4)])).toBe(
      'report:r1:4',
    );
  });

  it('rejects a missing argument per call', () => {
    expect(() => keys('report:<<1.id>>', Reports.prototype.generate, ['r1'])).toThrow('<<1.id>> is missing');
  });

  it('throws at compile time for a name that is not a parameter, listing the parameters', () => {
    const parsed = parseKeyTemplate('report:<<nope>>');
    expect(() => compileArgumentLookup([parsed], Reports.prototype.generate, 'Reports.generate')).toThrow(
      /<<nope>> on Reports.generate names no parameter \(its parameters are reportId, order\)/,
    );
  });

  it('does not guess names when the parameter list has defaults; indexes still work', () => {
    const parsed = parseKeyTemplate('x:<<a>>');
    expect(() => compileArgumentLookup([parsed], Reports.prototype.withDefault, 'Reports.withDefault')).toThrow(
      /cannot be read reliably/,
    );
    expect(keys('x:<<0>>', Reports.prototype.withDefault, ['a1'])).toBe('x:a1');
  });

  it('reads names conservatively', () => {
    expect(readParameterNames(Reports.prototype.generate)).toEqual(['reportId', 'order']);
    expect(readParameterNames(Reports.prototype.stream)).toEqual(['first']);
    expect(
      readParameterNames(function named(a: unknown, b: unknown) {
        return [a, b];
      }),
    ).toEqual(['a', 'b']);
    expect(readParameterNames((a: unknown, b: unknown) => [a, b])).toEqual(['a', 'b']);
    expect(readParameterNames(() => 1)).toEqual([]);
    expect(readParameterNames((...rest: unknown[]) => rest)).toBeUndefined();
    expect(readParameterNames(({ id }: { id: string }) => id)).toBeUndefined();
    expect(readParameterNames(Math.max)).toBeUndefined();
    expect(readParameterNames(Reports.prototype.generate.bind(null))).toBeUndefined();
    expect(
      readParameterNames(function (a /* comment */ : unknown) {
        return a;
      }),
    ).toBeUndefined();
  });
});
