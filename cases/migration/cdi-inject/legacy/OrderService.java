package com.acme.orders;

import java.util.List;

import javax.enterprise.context.ApplicationScoped;
import javax.inject.Inject;

@ApplicationScoped
public class OrderService {

    @Inject
    OrderRepository repository;

    public List<Order> openOrders(String customer) {
        return repository.findOpenByCustomer(customer);
    }
}
