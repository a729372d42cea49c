import { ApolloDriver, ApolloDriverConfig } from '@nestjs/apollo';
import { INestApplication } from '@nestjs/common';
import { Args, Field, GraphQLModule, InputType, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { DistributedLockModule } from '../../lib/distributed-lock.module';
import { CurrentLock } from '../../lib/decorators/current-lock.decorator';
import { WithLock } from '../../lib/decorators/with-lock.decorator';
import type { LockHandle } from '../../lib/lock-handle';
import { LockService } from '../../lib/lock.service';
import { Gates } from './support/gates';

@InputType()
class ShipInput {
  @Field(() => Int)
  orderId!: number;
}

@Resolver()
class FilesResolver {
  constructor(private readonly gates: Gates) {}

  @Query(() => String)
  ping(): string {
    return 'pong';
  }

  @Mutation(() => String)
  @WithLock('file:<<fileId>>', { waitTimeout: 0 })
  async editFile(
    @Args('fileId') fileId: string,
    @Args('gate', { type: () => String, nullable: true }) gate: string | undefined,
    @CurrentLock() lock: LockHandle,
  ): Promise<string> {
    if (gate) await this.gates.pass(gate);
    return `${fileId} ${lock.key} ${lock.fencingToken}`;
  }

  /** Arguments are read by path; the method's parameter names play no part. */
  @Mutation(() => String)
  @WithLock('order:<<input.orderId>>')
  async shipOrder(@Args('input', { type: () => ShipInput }) shipment: ShipInput): Promise<string> {
    return `${shipment.orderId}`;
  }
}

describe('LockInterceptor on GraphQL resolvers (Apollo)', () => {
  let app: INestApplication;
  let gates: Gates;

  beforeAll(async () => {
    gates = new Gates();
    const moduleRef = await Test.createTestingModule({
      imports: [
        DistributedLockModule.forRoot(),
        GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
      ],
      providers: [FilesResolver, { provide: Gates, useValue: gates }],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    gates.openAll();
    await app.close();
  });

  /** Sends the query at once (a supertest request starts only when awaited). */
  async function graphql(query: string): Promise<request.Response> {
    return await request(app.getHttpServer()).post('/graphql').send({ query });
  }

  it("locks the key built from the resolver's arguments, and releases it after the mutation", async () => {
    const response = await graphql('mutation { editFile(fileId: "a/1") }');
    expect(response.body).toEqual({ data: { editFile: expect.stringMatching(/^a\/1 file:a%2F1 \d+$/) } });
    expect(await app.get(LockService).isLocked('file:a%2F1')).toBe(false);
    const nested = await graphql('mutation { shipOrder(input: { orderId: 7 }) }');
    expect(nested.body).toEqual({ data: { shipOrder: '7' } });
  });

  it('answers a busy key with a GraphQL error carrying the 409 body', async () => {
    const first = graphql('mutation { editFile(fileId: "busy", gate: "busy") }');
    await gates.entered('busy');
    expect(await app.get(LockService).isLocked('file:busy')).toBe(true);
    const busy = await graphql('mutation { editFile(fileId: "busy") }');
    expect(busy.body.data).toBeNull();
    expect(busy.body.errors[0]).toMatchObject({
      message: 'The resource is locked by another request: "file:busy".',
      path: ['editFile'],
      extensions: { status: 409, originalError: { statusCode: 409, code: 'LockTimeoutError', key: 'file:busy' } },
    });
    gates.open('busy');
    expect((await first).body.data.editFile).toMatch(/^busy file:busy \d+$/);
  });

  it('answers an empty argument with the 400 body naming the placeholder', async () => {
    const response = await graphql('mutation { editFile(fileId: "") }');
    expect(response.body.errors[0].extensions).toMatchObject({
      code: 'BAD_REQUEST',
      originalError: {
        statusCode: 400,
        code: 'UnresolvedPlaceholderError',
        message: expect.stringContaining('<<fileId>> is an empty string'),
      },
    });
  });
});
