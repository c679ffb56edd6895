// A NATS JetStream destination with the nats client: one connection per subscription, opened on the first publish
// (no automatic reconnect, no servers learnt from the cluster: only the address the guard checked), each event an
// acknowledged JetStream publish to the URL's subject with the webhook headers and the event and subscription uuids as
// message id (a stream drops a second publish of it within its duplicate window and acknowledges it as a duplicate:
// delivered).
import { AsyncLocalStorage } from 'node:async_hooks';
import diagnostics from 'node:diagnostics_channel';
import type net from 'node:net';
import { connect, headers as natsHeaders, type JetStreamClient, type NatsConnection, type TlsOptions as NatsTlsOptions } from 'nats';
import { urlHost } from '../address.ts';
import { decoded, queryParam, withPassword } from './url.ts';
import { closeWithin, dialTo, failure, guardedAddress, openedWithin, OK, refusedCertificate, socketFailure, tlsOptions, tunnelFailure, tunnelStall, type BrokerMessage, type PublishOutcome, type Publisher, type PublisherOptions } from './publisher.ts';
import type { Tunnel } from './tunnel.ts';

interface Open {
  nc: NatsConnection;
  js: JetStreamClient;
}

/**
 * The sockets the nats client opens for a publisher. The client gives no handle on its socket until it has connected,
 * and one whose opening failed (its timeout, or our close) it leaves open while the server neither answers nor closes:
 * a server that accepts and stays silent, or sends a byte now and then, held it as long as it liked (a probe, 2026-11-30:
 * still open 11 s after a 1.5 s deadline). Node announces every client socket it creates
 * ("net.client.socket", net.connect's); the ones created inside a publisher's `connect` call (its async context) are its
 * own. TLS runs on that socket (the client dials plain and reads INFO first: no `handshakeFirst`), so it is the one.
 */
const connecting = new AsyncLocalStorage<Set<net.Socket>>();
const socketCreated = diagnostics.channel('net.client.socket'); // held here: a channel nobody references may be collected
socketCreated.subscribe((m) => {
  const mine = connecting.getStore();
  if (!mine) return;
  const sock = (m as { socket: net.Socket }).socket;
  mine.add(sock);
  sock.once('close', () => mine.delete(sock));
});

/** The nats client's error codes (ErrorCode of nats-base-client) by what they mean for an attempt. */
const REFUSED = new Set(['AUTHORIZATION_VIOLATION', 'AUTHENTICATION_EXPIRED', 'AUTHENTICATION_TIMEOUT', 'ACCOUNT_EXPIRED', 'PERMISSIONS_VIOLATION', 'BAD_AUTHENTICATION', 'BAD_CREDS', 'MAX_PAYLOAD_EXCEEDED', 'BAD SUBJECT', 'BAD_SUBJECT']);
const UNREACHABLE = new Set(['CONNECTION_REFUSED', 'CONNECTION_CLOSED', 'CONNECTION_DRAINING', 'DISCONNECT', 'NATS_PROTOCOL_ERR']);

/** The client's refusal of a server that offers no TLS when TLS was asked (right after the server's INFO). */
const offersNoTls = (err: any) => err?.code === 'SERVER_OPT_NA' && /tls/i.test(String(err?.message));

function outcomeOf(err: any): PublishOutcome {
  const code = typeof err?.code === 'string' ? err.code : '';
  const message = `${code ? `${code}: ` : ''}${err?.message ?? err}`;
  // A JetStream API error first: a stream that refuses the message (full, with discard new) also answers code 503,
  // and was logged as no stream at all (found by a probe); its description says why.
  if (err?.api_error) return failure('BROKER_REFUSED', `${message}${err.api_error.description ? `: ${err.api_error.description}` : ''}${err.api_error.err_code ? ` (err_code ${err.api_error.err_code})` : ''}`);
  // No responders: nothing listens on the subject, i.e. no stream is bound to it.
  if (code === '503') return failure('NO_ROUTE', 'no JetStream stream is bound to the subject (the server answered 503: no responders)');
  if (code === 'TIMEOUT' || code === 'CONNECTION_TIMEOUT' || code === '408') return failure('BROKER_TIMEOUT', message);
  // The handshake failed, or the subscription's mutual TLS asks for TLS of a server that offers none.
  if (code === 'TLS' || offersNoTls(err)) return failure('TLS', offersNoTls(err) ? `the server offers no TLS (${message})` : message);
  if (REFUSED.has(code)) return failure('BROKER_REFUSED', message);
  if (UNREACHABLE.has(code)) return failure('BROKER_UNREACHABLE', message);
  return socketFailure(err, 'BROKER_REFUSED');
}

export class NatsPublisher implements Publisher {
  private opening: Promise<Open> | undefined;
  private closing = false;
  private closed = false;
  private readonly subject: string;
  /** The connection's tunnel through BULB_WEBHOOK_PROXY, if any. */
  private tunnel: Tunnel | undefined;
  /** The sockets the client opened for this publisher and not yet closed (see `connecting`). */
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly url: string, private readonly password: string | null, private readonly opts: PublisherOptions) {
    this.subject = queryParam(new URL(url), 'subject')!; // percent-decoded only: a "+" is a plus
  }

  get broken(): boolean {
    return this.closed;
  }

  private open(): Promise<Open> {
    this.opening ??= (async () => {
      const u = withPassword(this.url, this.password);
      const name = u.hostname.replace(/^\[|\]$/g, '');
      // TLS whenever the server offers it, its certificate checked for the URL's host (not the address dialled, nor the
      // loopback tunnel): asked first; the client gives up on a server that offers none right after its INFO, before any
      // credential is sent, and only then does the plain connection follow. With the subscription's mutual TLS (tls),
      // TLS is required: a server without it fails the attempt (TLS), and the client certificate is presented.
      // Both connections go to the one address the guard checked (one lookup).
      const address = await guardedAddress(name, this.opts.allowPrivate);
      let nc: NatsConnection;
      try {
        nc = await this.connectTo(u, address, tlsOptions(this.opts.tls, name) as NatsTlsOptions);
      } catch (err) {
        if (this.opts.tls || !offersNoTls(err) || this.closing) throw err;
        nc = await this.connectTo(u, address, null);
      }
      void nc.closed().then(() => (this.closed = true));
      if (this.closing) {
        void closeWithin(() => nc.close());
        throw new Error('the publisher was closed while its connection opened');
      }
      return { nc, js: nc.jetstream({ timeout: this.opts.timeoutMs }) };
    })().catch((err) => {
      this.closed = true;
      this.dropSockets(); // a failed opening leaves no socket behind (the client closes only those the server closed)
      throw err;
    });
    return this.opening;
  }

  /** One connection to the checked address (or a tunnel to it through the proxy), with `tls` or none (null: never TLS). */
  private async connectTo(u: URL, address: string, tls: NatsTlsOptions | null): Promise<NatsConnection> {
    const dial = await dialTo(address, Number(u.port || 4222), this.opts);
    this.tunnel?.close();
    this.tunnel = dial.tunnel;
    return connecting.run(this.sockets, () => connect({
      servers: `${urlHost(dial.host)}:${dial.port}`,
      tls,
      user: u.username ? decoded(u.username) : undefined,
      pass: u.password ? decoded(u.password) : undefined,
      name: this.opts.name,
      timeout: this.opts.timeoutMs,
      reconnect: false,
      ignoreClusterUpdates: true,
      // No stack captured for each request (two Error objects per publish): an outcome is told by its code, never its stack.
      noAsyncTraces: true,
    }));
  }

  private dropSockets(): void {
    for (const sock of this.sockets) sock.destroy();
  }

  async publish(msg: BrokerMessage): Promise<PublishOutcome> {
    let js: JetStreamClient;
    try {
      ({ js } = await this.open());
    } catch (err) {
      return tunnelFailure(this.tunnel) ?? refusedCertificate(this.opts.tls, err) ?? outcomeOf(err);
    }
    try {
      const h = natsHeaders();
      for (const [k, v] of Object.entries(msg.headers)) h.set(k, v);
      // The message id is the delivery's (event and subscription): a retry after a lost acknowledgement is dropped as a
      // duplicate, another subscription's message of the same event to the same stream is not (it was, and lost).
      await js.publish(this.subject, Buffer.from(msg.body), { msgID: `${msg.id}:${this.opts.subscription}`, headers: h, timeout: this.opts.timeoutMs });
      return OK;
    } catch (err) {
      return outcomeOf(err);
    }
  }

  stalled(): PublishOutcome | undefined {
    return tunnelStall(this.tunnel, this.opts.timeoutMs);
  }

  async close(): Promise<void> {
    this.closed = true;
    // A connection still opening is closed as soon as it opens (open() checks this.closing).
    this.closing = true;
    const o = await openedWithin(this.opening);
    // Still opening after CLOSE_WAIT_MS, failed, or not closed in time: its socket is dropped.
    if (!o || !(await closeWithin(() => o.nc.close()))) this.dropSockets();
    this.tunnel?.close();
  }
}
