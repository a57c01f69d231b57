import { it, expect } from 'vitest';

it('serves the health check', async () => {
  const res = await fetch('http://localhost:3000/health');
  expect(res.ok).toBe(true);
});
