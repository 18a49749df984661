import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface StallingProxy {
  /** `tcp://127.0.0.1:PORT`, for DOCKER_HOST. */
  host: string;
  /** Requests that were held, as `METHOD /path`. */
  stalled: string[];
  close(): Promise<void>;
}

/**
 * A Docker API proxy on loopback that forwards everything to the real daemon
 * socket, except requests matching `stall`, which it holds without answering.
 * Upgraded connections (attach) are piped raw.
 */
export async function startStallingProxy(stall: (method: string, path: string) => boolean, socketPath = '/var/run/docker.sock'): Promise<StallingProxy> {
  const stalled: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    if (stall(req.method ?? 'GET', path.replace(/^\/v[\d.]+/, ''))) {
      stalled.push(`${req.method} ${path}`);
      req.resume();
      return; // never answered
    }
    const upstream = http.request({ socketPath, path, method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      // attach answers its headers long before any body: pass them on at once.
      res.flushHeaders();
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req, client, head) => {
    const upstream = net.connect(socketPath, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`, ...Object.entries(req.headers).map(([k, v]) => `${k}: ${v}`), '', ''];
      upstream.write(lines.join('\r\n'));
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `tcp://127.0.0.1:${port}`,
    stalled,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
