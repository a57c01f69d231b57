package com.acme.orders;

import java.util.List;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

@ApplicationScoped
public class OrderService {

    @Inject
    OrderRepository repository;

    public List<Order> openOrders(String customer) {
        return repository.findOpenByCustomer(customer);
    }
}
