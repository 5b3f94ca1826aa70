/**
 * A real SMTP server on 127.0.0.1 (a free port) for tests: it parses every message it accepts
 * and records it, and it can refuse or hang to test failures. No TLS, no authentication needed.
 */
import type { Socket } from 'node:net';
import { simpleParser, type AddressObject } from 'mailparser';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { SMTPTransportOptions } from 'nodemailer';

/** How the server treats the next connections. */
export type SmtpMode =
  /** Accept and record every message. */
  | 'accept'
  /** Refuse every recipient with 550. */
  | 'refuse-rcpt'
  /** Refuse every message after DATA with 550. */
  | 'refuse-data'
  /** Accept the connection but never send the greeting. */
  | 'hang-greeting'
  /** Take the message but never answer the end of DATA. */
  | 'hang-data';

/** One message as the server received it. */
export interface ReceivedMail {
  /** The SMTP envelope: MAIL FROM and every RCPT TO. */
  envelope: { from: string; to: string[] };
  /** Addresses of the From header. */
  from: string[];
  /** Addresses of the To header. */
  to: string[];
  subject: string;
  text: string;
  html: string;
  /** The raw message, as sent. */
  raw: string;
}

/** A recording SMTP server; start with `TestSmtpServer.start()`, stop with `stop()`. */
export class TestSmtpServer {
  /** Messages accepted so far, oldest first. */
  readonly messages: ReceivedMail[] = [];
  /** How connections are treated; may be changed between sends. */
  mode: SmtpMode;
  private readonly server: SMTPServer;
  private readonly sockets = new Set<Socket>();
  private portNumber = 0;

  private constructor(mode: SmtpMode) {
    this.mode = mode;
    this.server = new SMTPServer({
      secure: false,
      authOptional: true,
      hideSTARTTLS: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      disableReverseLookup: true,
      logger: false,
      closeTimeout: 100,
      onConnect: (session, callback) => this.onConnect(session, callback),
      onRcptTo: (_address, _session, callback) => callback(this.mode === 'refuse-rcpt' ? refusal('recipient') : null),
      onData: (stream, session, callback) => this.onData(stream, session, callback),
    });
    this.server.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Starts a server listening on 127.0.0.1, on a free port. */
  static async start(mode: SmtpMode = 'accept'): Promise<TestSmtpServer> {
    const server = new TestSmtpServer(mode);
    await server.listen();
    return server;
  }

  get port(): number {
    return this.portNumber;
  }

  /** nodemailer SMTP transport options that reach this server. */
  transportOptions(extra: SMTPTransportOptions = {}): SMTPTransportOptions {
    return { host: '127.0.0.1', port: this.portNumber, secure: false, ignoreTLS: true, ...extra };
  }

  /** Stops listening and ends every connection, hung ones included. */
  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  private listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.on('error', reject);
      this.server.listen(0, '127.0.0.1', () => {
        const address = this.server.server.address();
        if (address === null || typeof address === 'string') return reject(new Error('SMTP server has no port'));
        this.portNumber = address.port;
        resolve();
      });
    });
  }

  private onConnect(_session: SMTPServerSession, callback: (err?: Error | null) => void): void {
    if (this.mode !== 'hang-greeting') callback();
  }

  private onData(
    stream: SMTPServerDataStream,
    session: SMTPServerSession,
    callback: (err?: Error | null) => void,
  ): void {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      if (this.mode === 'hang-data') return;
      if (this.mode === 'refuse-data') return callback(refusal('message'));
      this.record(Buffer.concat(chunks), session).then(() => callback(), callback);
    });
  }

  private async record(raw: Buffer, session: SMTPServerSession): Promise<void> {
    const mail = await simpleParser(raw);
    const { mailFrom, rcptTo } = session.envelope;
    this.messages.push({
      envelope: { from: mailFrom ? mailFrom.address : '', to: rcptTo.map((rcpt) => rcpt.address) },
      from: addresses(mail.from),
      to: addresses(mail.to),
      subject: mail.subject ?? '',
      text: mail.text ?? '',
      html: mail.html === false ? '' : mail.html,
      raw: raw.toString('utf8'),
    });
  }
}

function refusal(what: string): Error & { responseCode: number } {
  return Object.assign(new Error(`${what} refused by the test server`), { responseCode: 550 });
}

function addresses(field: AddressObject | AddressObject[] | undefined): string[] {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return objects.flatMap((object) => object.value.map((mailbox) => mailbox.address ?? ''));
}
