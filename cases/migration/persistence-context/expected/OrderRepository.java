package com.acme.orders;

import java.util.List;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.persistence.EntityManager;

@ApplicationScoped
public class OrderRepository {

    @Inject
    EntityManager em;

    public List<Order> findOpenByCustomer(String customer) {
        return em.createQuery("select o from Order o where o.customer = :c", Order.class)
                .setParameter("c", customer)
                .getResultList();
    }
}
