import { it, expect } from 'vitest';

it('rejects an unknown route', async () => {
  const res = await fetch('http://localhost:3000/nope');
  expect(res.status).toBe(404);
});
