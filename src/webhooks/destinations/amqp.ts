// An AMQP 0-9-1 (RabbitMQ) destination with amqplib: one connection and one confirm channel per subscription,
// opened on the first publish; each event published to the URL's exchange and routing key as a persistent,
// mandatory message with the webhook headers, settled by the broker's confirm (an unroutable message comes back
// before its ack: NO_ROUTE). Any channel or connection loss marks the publisher broken; the registry opens a new one.
import { connect, credentials as amqpCredentials, type ChannelModel, type ConfirmChannel } from 'amqplib';
import { urlHost } from '../address.ts';
import { queryParam, userAndPassword, withPassword } from './url.ts';
import { closeWithin, dialFor, failure, openedWithin, OK, refusedCertificate, socketFailure, tlsOptions, tunnelFailure, tunnelStall, type BrokerMessage, type PublishOutcome, type Publisher, type PublisherOptions } from './publisher.ts';
import type { Tunnel } from './tunnel.ts';

interface Open {
  conn: ChannelModel;
  ch: ConfirmChannel;
}

/** A reply code of the broker on an error (403 ACCESS_REFUSED, 404 NOT_FOUND, 530 NOT_ALLOWED…), or undefined. */
function replyCode(err: any): number | undefined {
  return typeof err?.code === 'number' ? err.code : undefined;
}

export class AmqpPublisher implements Publisher {
  broken = false;
  private opening: Promise<Open> | undefined;
  private closing = false;
  /** Message ids the broker returned as unroutable, until their confirm arrives (the return comes first). */
  private readonly returned = new Set<string>();
  /** Why the broker closed the channel or connection, when it said (e.g. 404 NOT_FOUND - no exchange). */
  private closedBy: Error | undefined;
  private readonly exchange: string;
  private readonly routingKey: string;
  /** The connection's tunnel through BULB_WEBHOOK_PROXY, if any. */
  private tunnel: Tunnel | undefined;
  /**
   * Destroys the connection's socket while it opens. amqplib gives no handle on it before it opens, and on a failure
   * of its own making (our deadline, our close) keeps it until its idle timeout, which a server sending a byte now and
   * then (a half frame, a banner read slowly) never lets fire: the socket stayed open for good (a probe, 2026-11-30).
   */
  private readonly dropSocket = new AbortController();

  constructor(private readonly url: string, private readonly password: string | null, private readonly opts: PublisherOptions) {
    const u = new URL(url);
    // Percent-decoded only: a "+" is a plus (queryParams).
    this.exchange = queryParam(u, 'exchange')!;
    this.routingKey = queryParam(u, 'routingKey') ?? '';
  }

  private open(): Promise<Open> {
    this.opening ??= (async () => {
      const u = withPassword(this.url, this.password);
      const host = u.hostname.replace(/^\[|\]$/g, '');
      const secure = u.protocol === 'amqps:';
      const dial = await dialFor(host, Number(u.port || (secure ? 5671 : 5672)), this.opts);
      this.tunnel = dial.tunnel;
      // amqplib reads credentials and the vhost from the URL; the socket goes to the address the guard checked (or
      // the tunnel to it through the proxy).
      const target = new URL(u.href);
      target.hostname = urlHost(dial.host);
      target.port = String(dial.port);
      target.search = '';
      // amqps: the broker's certificate is checked for the URL's host, and the subscription's client certificate
      // (tls) presented; the API refuses tls on a plain amqp URL (receiver-auth.ts).
      const conn = await connect(target.href, {
        // The credentials decoded as UTF-8 here: amqplib decodes a URL's with the Latin-1 unescape(), so a non-ASCII
        // user name or password (p%C3%A9) reached the broker as another one and was refused (found by a probe).
        credentials: amqpCredentials.plain(...userAndPassword(u)),
        timeout: this.opts.timeoutMs,
        ...(secure ? tlsOptions(this.opts.tls, host) : {}),
        clientProperties: { connection_name: this.opts.name },
        // Handed to net.connect / tls.connect with the rest of these options (amqplib's types do not list it).
        ...({ signal: this.dropSocket.signal } as object),
      });
      conn.on('error', (err) => (this.closedBy ??= err));
      conn.on('close', () => (this.broken = true));
      conn.on('blocked', () => {}); // a broker low on resources: publishes wait for it, bounded by the deadline
      let ch: ConfirmChannel;
      try {
        ch = await conn.createConfirmChannel();
      } catch (err) {
        await closeWithin(() => conn.close());
        throw err;
      }
      ch.on('error', (err) => (this.closedBy ??= err));
      ch.on('close', () => {
        this.broken = true;
        void closeWithin(() => conn.close()).then((done) => done || (conn.connection as any).stream?.destroy?.());
      });
      ch.on('return', (m) => {
        if (typeof m.properties.messageId === 'string') this.returned.add(m.properties.messageId);
      });
      if (this.closing) {
        void closeWithin(() => conn.close());
        throw new Error('the publisher was closed while its connection opened');
      }
      return { conn, ch };
    })().catch((err) => {
      this.broken = true;
      this.dropSocket.abort(); // a failed opening leaves no socket behind (amqplib closes only those it failed itself)
      throw err;
    });
    return this.opening;
  }

  async publish(msg: BrokerMessage): Promise<PublishOutcome> {
    let ch: ConfirmChannel;
    try {
      ({ ch } = await this.open());
    } catch (err) {
      return this.openFailure(err);
    }
    return new Promise<PublishOutcome>((resolve) => {
      try {
        ch.publish(this.exchange, this.routingKey, Buffer.from(msg.body), {
          mandatory: true,
          persistent: true,
          contentType: msg.headers['Content-Type'],
          messageId: msg.id,
          timestamp: Math.floor(Date.now() / 1000),
          headers: msg.headers,
        }, (err) => {
          const unroutable = this.returned.delete(msg.id);
          if (err) return resolve(this.lost(err));
          if (unroutable) return resolve(failure('NO_ROUTE', `the broker returned the message: no queue is bound to exchange "${this.exchange}" for routing key "${this.routingKey}"`));
          resolve(OK);
        });
      } catch (err) {
        resolve(this.lost(err)); // the channel closed before this publish
      }
    });
  }

  /** A publish that ended with the channel: the broker's reason when it gave one (a 404 for a missing exchange…). */
  private lost(err: any): PublishOutcome {
    this.broken = true;
    const by = this.closedBy;
    if (replyCode(by) !== undefined) return failure('BROKER_REFUSED', String(by!.message));
    if (/nack/i.test(String(err?.message))) return failure('BROKER_REFUSED', 'the broker did not accept the message (nack)');
    return socketFailure(by ?? err);
  }

  /** The connection could not be opened: unreachable, or the broker said no during the handshake. */
  private openFailure(err: any): PublishOutcome {
    const refused = tunnelFailure(this.tunnel) ?? refusedCertificate(this.opts.tls, err);
    if (refused) return refused;
    const message = String(err?.message ?? err);
    if (typeof err?.code === 'string') return socketFailure(err);
    if (/ETIMEDOUT/.test(message)) return failure('BROKER_TIMEOUT', message);
    // Something other than an AMQP server answered: amqplib reads its first bytes as a frame size and says the number,
    // which spells them ("-2.0" of an SSH banner): not said, so the logs API tells nothing of the service (a probe).
    if (/^Frame size \d+ exceeds|Expected AMQP|Unexpected frame|not an AMQP/i.test(message)) {
      return failure('BROKER_UNREACHABLE', 'the server did not answer as an AMQP 0-9-1 broker');
    }
    // RabbitMQ answers connection.open for a vhost that does not exist, or that the user may not use, by closing the
    // connection (530 NOT_ALLOWED); amqplib reports only the unexpected frame, not its reason.
    if (/Expected ConnectionOpenOk; got <ConnectionClose/.test(message)) {
      return failure('BROKER_REFUSED', `${message}: the broker closed the connection when asked to open the vhost "${new URL(this.url).pathname.slice(1) || '/'}" (it does not exist, or the user may not use it: AMQP 530 NOT_ALLOWED)`);
    }
    if (/ACCESS.REFUSED|NOT_ALLOWED|NOT.FOUND|vhost|\b(403|404|530)\b/i.test(message) || replyCode(err) !== undefined) return failure('BROKER_REFUSED', message);
    return failure('BROKER_UNREACHABLE', message);
  }

  /** Closes the connection; a broker that does not answer the close (hanging, cut off) gets its socket dropped. */
  stalled(): PublishOutcome | undefined {
    return tunnelStall(this.tunnel, this.opts.timeoutMs);
  }

  async close(): Promise<void> {
    this.broken = true;
    // A connection still opening is closed as soon as it opens (open() checks this.closing).
    this.closing = true;
    const o = await openedWithin(this.opening);
    if (o && !(await closeWithin(() => o.conn.close()))) (o.conn.connection as any).stream?.destroy?.();
    // Still opening after CLOSE_WAIT_MS (a broker, or something else, answering slowly or not at all): dropped now.
    if (!o) this.dropSocket.abort();
    this.tunnel?.close();
  }
}

