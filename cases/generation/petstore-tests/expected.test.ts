import { it, expect } from 'vitest';

it('serves the health check', async () => {
  const res = await fetch('http://localhost:3000/health');
  expect(res.ok).toBe(true);
});

const BASE_URL = 'http://localhost:3000';

it('lists pets', async () => {
  expect((await fetch(`${BASE_URL}/pets`)).status).toBe(200);
});

it('creates a pet', async () => {
  const res = await fetch(`${BASE_URL}/pets`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Rex' }) });
  expect(res.status).toBe(201);
});

it('gets a pet by id', async () => {
  expect((await fetch(`${BASE_URL}/pets/1`)).status).toBe(200);
});
