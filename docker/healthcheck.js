// The image's HEALTHCHECK: exit 0 when GET /healthz answers 200 within two seconds, else 1.
// Node itself does the request because slim images have neither curl nor wget.
import http from 'node:http';

const port = Number(process.env.HALSERVE_PORT || process.env.PORT || 8080);
const bound = process.env.HALSERVE_HOST || process.env.HOST || '0.0.0.0';
// A wildcard address is reached through loopback; a specific one only through itself.
const host = bound === '0.0.0.0' ? '127.0.0.1' : bound === '::' ? '::1' : bound;

const req = http.get({ host, port, path: '/healthz', timeout: 2000 }, (res) => {
  res.resume();
  process.exit(res.statusCode === 200 ? 0 : 1);
});
req.on('timeout', () => req.destroy(new Error('no answer within 2 s')));
req.on('error', (err) => {
  console.error(`healthcheck: ${err.message}`);
  process.exit(1);
});
