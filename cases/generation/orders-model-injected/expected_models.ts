/** A customer order. */
export interface Order {
  /** Order id (UUID). */
  id: string;
  items: OrderItem[];
  /** Total in cents. */
  total: number;
  /** Free text shown to staff. */
  note?: string;
}

export interface OrderItem {
  sku: string;
  quantity: number;
}
